package health

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatLocal holds the metered ".." of a run. Scripts cannot name it: it
// is not a Lua identifier.
const concatLocal = "(concat)"

// meterConcat rewrites every ".." of a chunk into a call of the metered
// concat, which the chunk receives as its first argument. gopher-lua runs
// ".." as one instruction that can join up to 255 operands, so a script
// could build gigabytes in one step, out of reach of the heap sampler.
func meterConcat(chunk []ast.Stmt) []ast.Stmt {
	rewriteStmts(chunk)
	local := &ast.LocalAssignStmt{Names: []string{concatLocal}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return append([]ast.Stmt{local}, chunk...)
}

func rewriteStmts(stmts []ast.Stmt) {
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.AssignStmt:
			rewriteExprs(s.Lhs)
			rewriteExprs(s.Rhs)
		case *ast.LocalAssignStmt:
			rewriteExprs(s.Exprs)
		case *ast.FuncCallStmt:
			s.Expr = rewriteExpr(s.Expr)
		case *ast.DoBlockStmt:
			rewriteStmts(s.Stmts)
		case *ast.WhileStmt:
			s.Condition = rewriteExpr(s.Condition)
			rewriteStmts(s.Stmts)
		case *ast.RepeatStmt:
			s.Condition = rewriteExpr(s.Condition)
			rewriteStmts(s.Stmts)
		case *ast.IfStmt:
			s.Condition = rewriteExpr(s.Condition)
			rewriteStmts(s.Then)
			rewriteStmts(s.Else)
		case *ast.NumberForStmt:
			s.Init, s.Limit = rewriteExpr(s.Init), rewriteExpr(s.Limit)
			if s.Step != nil {
				s.Step = rewriteExpr(s.Step)
			}
			rewriteStmts(s.Stmts)
		case *ast.GenericForStmt:
			rewriteExprs(s.Exprs)
			rewriteStmts(s.Stmts)
		case *ast.FuncDefStmt:
			rewriteStmts(s.Func.Stmts)
		case *ast.ReturnStmt:
			rewriteExprs(s.Exprs)
		}
	}
}

func rewriteExprs(es []ast.Expr) {
	for i, e := range es {
		es[i] = rewriteExpr(e)
	}
}

func rewriteExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.StringConcatOpExpr:
		// a .. b .. c parses as a .. (b .. c), one instruction for the
		// chain; a parenthesised (a .. b) .. c is two.
		call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatLocal}, AdjustRet: true}
		var cur ast.Expr = x
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			call.Args = append(call.Args, rewriteExpr(c.Lhs))
			cur = c.Rhs
		}
		call.Args = append(call.Args, rewriteExpr(cur))
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		call.Func.SetLine(x.Line())
		return call
	case *ast.AttrGetExpr:
		x.Object, x.Key = rewriteExpr(x.Object), rewriteExpr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			if f.Key != nil {
				f.Key = rewriteExpr(f.Key)
			}
			f.Value = rewriteExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		if x.Func != nil {
			x.Func = rewriteExpr(x.Func)
		}
		if x.Receiver != nil {
			x.Receiver = rewriteExpr(x.Receiver)
		}
		rewriteExprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs, x.Rhs = rewriteExpr(x.Lhs), rewriteExpr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs, x.Rhs = rewriteExpr(x.Lhs), rewriteExpr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs, x.Rhs = rewriteExpr(x.Lhs), rewriteExpr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.FunctionExpr:
		rewriteStmts(x.Stmts)
	}
	return e
}

// concat joins its operands as Lua's ".." does, right to left: runs of
// strings and numbers in one piece, charged to the budget before they are
// joined, and other values through their __concat metamethod.
func (m *meter) concat(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		return 0
	}
	rhs := L.Get(n)
	for i := n - 1; i >= 1; {
		lhs := L.Get(i)
		if !lua.LVCanConvToString(lhs) || !lua.LVCanConvToString(rhs) {
			rhs = concatMeta(L, lhs, rhs)
			i--
			continue
		}
		j := i
		for j > 1 && lua.LVCanConvToString(L.Get(j-1)) {
			j--
		}
		parts := make([]string, 0, i-j+2)
		size := int64(0)
		for k := j; k <= i; k++ {
			parts = append(parts, lua.LVAsString(L.Get(k)))
			size += int64(len(parts[len(parts)-1]))
		}
		parts = append(parts, lua.LVAsString(rhs))
		m.charge(L, size+int64(len(parts[len(parts)-1])))
		rhs = lua.LString(strings.Join(parts, ""))
		i = j - 1
	}
	L.Push(rhs)
	return 1
}

func concatMeta(L *lua.LState, lhs, rhs lua.LValue) lua.LValue {
	mm := L.GetMetaField(lhs, "__concat")
	if mm == lua.LNil {
		mm = L.GetMetaField(rhs, "__concat")
	}
	if mm.Type() != lua.LTFunction {
		L.RaiseError("cannot perform concat operation between %s and %s", lhs.Type(), rhs.Type())
	}
	L.Push(mm)
	L.Push(lhs)
	L.Push(rhs)
	L.Call(2, 1)
	v := L.Get(-1)
	L.Pop(1)
	return v
}
