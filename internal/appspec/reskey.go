package appspec

// Label renders the key as people read it: group/Kind namespace/name,
// without the parts that are empty.
func (k ResourceKey) Label() string {
	s := k.Kind + " "
	if k.Group != "" {
		s = k.Group + "/" + s
	}
	if k.Namespace != "" {
		s += k.Namespace + "/"
	}
	return s + k.Name
}
