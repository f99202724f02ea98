package logrecord

import (
	"context"

	"go.opentelemetry.io/collector/client"
)

// ClientAttributes are the auth-data attributes that name a client, in the order
// they are looked for: basicauth's "username", the oidc extension's
// "subject".
var ClientAttributes = []string{"username", "subject"}

// ClientFromContext is the client the request's authenticator named, "" when
// none did.
func ClientFromContext(ctx context.Context) string {
	auth := client.FromContext(ctx).Auth
	if auth == nil {
		return ""
	}
	for _, name := range ClientAttributes {
		if v, ok := auth.GetAttribute(name).(string); ok && v != "" {
			return v
		}
	}
	return ""
}
