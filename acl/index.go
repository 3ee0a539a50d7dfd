package acl

import "sync"

// index finds the bindings that apply to a resource without looking at
// the others: by type, then literal name (the wildcard "*" under its
// own key) or prefix. An all-topics Metadata of 10,000 topics asks
// 10,000 questions, and a scan of every binding for each would make
// that cost grow with the product of topics and ACLs.
type index struct {
	byType map[ResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]Binding
	prefixed map[string][]Binding
	shortest int // the shortest prefix's length, to skip shorter ones
}

func newIndex(bs []Binding) *index {
	ix := &index{byType: map[ResourceType]*typeIndex{}}
	for _, b := range bs {
		t := ix.byType[b.ResourceType]
		if t == nil {
			t = &typeIndex{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
			ix.byType[b.ResourceType] = t
		}
		switch b.Pattern {
		case Literal:
			t.literal[b.Name] = append(t.literal[b.Name], b)
		case Prefixed:
			if t.shortest == 0 || len(b.Name) < t.shortest {
				t.shortest = len(b.Name)
			}
			t.prefixed[b.Name] = append(t.prefixed[b.Name], b)
		}
	}
	return ix
}

// matching calls fn for each binding whose pattern covers the resource
// rt named name, until fn returns false.
func (ix *index) matching(rt ResourceType, name string, fn func(Binding) bool) {
	t := ix.byType[rt]
	if t == nil {
		return
	}
	for _, key := range []string{name, Wildcard} {
		for _, b := range t.literal[key] {
			if !fn(b) {
				return
			}
		}
		if name == Wildcard {
			break
		}
	}
	if len(t.prefixed) == 0 {
		return
	}
	for n := max(t.shortest, 1); n <= len(name); n++ {
		for _, b := range t.prefixed[name[:n]] {
			if !fn(b) {
				return
			}
		}
	}
}

// of returns every binding of a resource type.
func (ix *index) of(rt ResourceType) *typeIndex { return ix.byType[rt] }

// indexCache keeps the index of the store's current version.
type indexCache struct {
	mu      sync.Mutex
	version uint64
	ix      *index
}

// index returns the index of the store's bindings, rebuilt when they
// change.
func (s *Store) index() (*index, error) {
	d, version, err := s.file.Snapshot()
	if err != nil {
		return nil, err
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if s.cache.ix == nil || s.cache.version != version {
		s.cache.ix, s.cache.version = newIndex(d.ACLs), version
	}
	return s.cache.ix, nil
}
