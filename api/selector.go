package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/windlass-cd/windlass/workflows"
)

// labelSelector reads ?selector= (Kubernetes label-selector syntax); nil
// when absent.
func labelSelector(c *echo.Context) (labels.Selector, error) {
	v := c.QueryParam("selector")
	if v == "" {
		return nil, nil
	}
	sel, err := labels.Parse(v)
	if err != nil {
		return nil, selectorProblem(err.Error())
	}
	return sel, nil
}

func selectorProblem(detail string) error {
	return &Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest,
		Detail: "selector: " + detail, Field: "selector"}
}

// selectorQuery translates a label selector into a visibility query on the
// WindlassLabels search attribute, whose values are "key" and
// "key=value" (workflows.LabelEntries). Each requirement is one clause; a
// KeywordList's != and NOT IN hold when no value matches, as a selector's
// != and notin hold for an app without the label.
func selectorQuery(sel labels.Selector) (string, error) {
	reqs, _ := sel.Requirements()
	var clauses []string
	for _, r := range reqs {
		k := r.Key()
		entries := func() (string, error) {
			var qs []string
			for _, v := range slices.Sorted(slices.Values(r.ValuesUnsorted())) {
				q, err := visibilityValue("selector", k+"="+v)
				if err != nil {
					return "", err
				}
				qs = append(qs, q)
			}
			return "(" + strings.Join(qs, ", ") + ")", nil
		}
		var op, val string
		var err error
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals:
			op = "="
			val, err = visibilityValue("selector", k+"="+r.ValuesUnsorted()[0])
		case selection.NotEquals:
			op = "!="
			val, err = visibilityValue("selector", k+"="+r.ValuesUnsorted()[0])
		case selection.In:
			op = "IN"
			val, err = entries()
		case selection.NotIn:
			op = "NOT IN"
			val, err = entries()
		case selection.Exists:
			op = "="
			val, err = visibilityValue("selector", k)
		case selection.DoesNotExist:
			op = "!="
			val, err = visibilityValue("selector", k)
		default:
			return "", selectorProblem("operator " + string(r.Operator()) + " is not supported (use =, ==, !=, in, notin, key or !key)")
		}
		if err != nil {
			return "", err
		}
		clauses = append(clauses, workflows.SearchAttrLabels+" "+op+" "+val)
	}
	return strings.Join(clauses, " AND "), nil
}

// startLabels are the search attributes a new app's workflow starts with.
func startLabels(kv map[string]string) temporal.SearchAttributes {
	if len(kv) == 0 {
		return temporal.SearchAttributes{}
	}
	key := temporal.NewSearchAttributeKeyKeywordList(workflows.SearchAttrLabels)
	return temporal.NewSearchAttributes(key.ValueSet(workflows.LabelEntries(kv)))
}

// labelsOf reads the labels back from WindlassLabels values.
func labelsOf(entries []string) map[string]string {
	var out map[string]string
	for _, e := range entries {
		if k, v, ok := strings.Cut(e, "="); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// selected keeps the rows sel matches: the visibility query narrows the
// list, and this makes it exact where a store compares without case.
func selected(rows []AppSummary, sel labels.Selector) []AppSummary {
	if sel == nil {
		return rows
	}
	return slices.DeleteFunc(rows, func(r AppSummary) bool { return !sel.Matches(labels.Set(r.Labels)) })
}
