package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/oncecall/oncecall"
	"github.com/oncecall/oncecall/db/dbsqlc"
)

// NewTemplate is a template version to store.
type NewTemplate struct {
	TenantID uuid.UUID
	ActionID uuid.UUID
	Name     string
	Subject  string
	Body     string
	Required []string
	Optional []string
}

// CreateTemplate stores version 1 of a template. It reports false, storing
// nothing, when the tenant already has a template of that name.
func (q queries) CreateTemplate(ctx context.Context, t NewTemplate) (oncecall.Template, bool, error) {
	row, err := q.q.CreateTemplate(ctx, dbsqlc.CreateTemplateParams{
		TenantID: t.TenantID, Name: t.Name, Subject: ptr(t.Subject), Body: t.Body,
		Required: nonNil(t.Required), Optional: nonNil(t.Optional), ActionID: t.ActionID,
	})
	return templateResult(row, err)
}

// AddTemplateVersion stores the next version of a template, in a
// transaction (the lock it takes is held until the end). It reports false,
// storing nothing, when the tenant has no template of that name.
func (q queries) AddTemplateVersion(ctx context.Context, t NewTemplate) (oncecall.Template, bool, error) {
	// Concurrent updates of one template wait for each other here instead
	// of picking the same version number.
	if _, err := q.q.LockTemplate(ctx, dbsqlc.LockTemplateParams{TenantID: t.TenantID, Name: t.Name}); err != nil {
		return templateResult(dbsqlc.MessageTemplate{}, err)
	}
	row, err := q.q.AddTemplateVersion(ctx, dbsqlc.AddTemplateVersionParams{
		TenantID: t.TenantID, Name: t.Name, Subject: ptr(t.Subject), Body: t.Body,
		Required: nonNil(t.Required), Optional: nonNil(t.Optional), ActionID: t.ActionID,
	})
	return templateResult(row, err)
}

func templateResult(row dbsqlc.MessageTemplate, err error) (oncecall.Template, bool, error) {
	switch err = notFound(err); err {
	case nil:
		return template(row), true, nil
	case ErrNotFound:
		return oncecall.Template{}, false, nil
	}
	return oncecall.Template{}, false, err
}

// LatestTemplate returns the newest version of one of the tenant's templates.
func (q queries) LatestTemplate(ctx context.Context, tenant uuid.UUID, name string) (oncecall.Template, error) {
	row, err := q.q.LatestTemplate(ctx, dbsqlc.LatestTemplateParams{TenantID: tenant, Name: name})
	if err != nil {
		return oncecall.Template{}, notFound(err)
	}
	return template(row), nil
}

// LatestTemplates returns the newest version of each of the tenant's
// templates, by name.
func (q queries) LatestTemplates(ctx context.Context, tenant uuid.UUID) ([]oncecall.Template, error) {
	rows, err := q.q.LatestTemplates(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]oncecall.Template, len(rows))
	for i, r := range rows {
		out[i] = template(r)
	}
	return out, nil
}

func template(r dbsqlc.MessageTemplate) oncecall.Template {
	return oncecall.Template{
		Name: r.Name, Version: int(r.Version), Subject: deref(r.Subject), Body: r.Body,
		Required: nonNil(r.Required), Optional: nonNil(r.Optional), CreatedAt: r.CreatedAt.UTC(),
	}
}

// nonNil keeps an empty list a list: the columns are NOT NULL arrays.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
