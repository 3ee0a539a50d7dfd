package acl

import (
	"errors"
	"path/filepath"
	"slices"

	"github.com/passbook-log/passbook/internal/jsonfile"
	"github.com/passbook-log/passbook/internal/layout"
)

// Store keeps the ACLs of a data directory (DIR/security/acls.json). It
// is safe for concurrent use and shared with other processes: `passbook
// acl add` while `passbook serve` runs takes effect within a second.
type Store struct {
	file  *jsonfile.File[doc]
	cache indexCache
}

type doc struct {
	ACLs []Binding `json:"acls"`
}

// OpenStore opens the ACL store of the data directory dataDir. The file
// is created by the first change.
func OpenStore(dataDir string) (*Store, error) {
	f, err := jsonfile.Open[doc](filepath.Join(layout.SecurityDir(dataDir), "acls.json"))
	if err != nil {
		return nil, err
	}
	return &Store{file: f}, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.file.Path() }

// Add stores bindings. All are validated first: if one is refused,
// none is added. A binding stored already is not added twice.
func (s *Store) Add(bs ...Binding) error {
	var errs []error
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return s.file.Update(func(d *doc) error {
		for _, b := range bs {
			if !slices.Contains(d.ACLs, b) {
				d.ACLs = append(d.ACLs, b)
			}
		}
		return nil
	})
}

// Delete removes the bindings each filter matches, and returns them,
// filter by filter. Filters are validated first: if one is refused,
// nothing is deleted.
func (s *Store) Delete(fs ...Filter) ([][]Binding, error) {
	for _, f := range fs {
		if err := f.Validate(); err != nil {
			return nil, err
		}
	}
	deleted := make([][]Binding, len(fs))
	err := s.file.Update(func(d *doc) error {
		keep := d.ACLs[:0]
		for _, b := range d.ACLs {
			gone := false
			for i, f := range fs {
				if f.Matches(b) {
					deleted[i] = append(deleted[i], b)
					gone = true
				}
			}
			if !gone {
				keep = append(keep, b)
			}
		}
		d.ACLs = keep
		return nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// List returns the bindings f matches, in the order they were added.
func (s *Store) List(f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	d, err := s.file.Get()
	if err != nil {
		return nil, err
	}
	var out []Binding
	for _, b := range d.ACLs {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out, nil
}
