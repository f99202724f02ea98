package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

func decodeFailure(f jsontape.Value) *Failure {
	if !f.Exists() || f.Type() != jsontape.Object {
		return nil
	}
	st, _ := f.Get("status").SafeInt()
	return &Failure{
		Code:    f.GetString("code"),
		Message: f.GetString("message"),
		Status:  st,
	}
}

func decodeReason(v jsontape.Value) Reason {
	if !v.Exists() {
		return Reason{}
	}
	if v.Type() == jsontape.String { // seed dialect: a bare word
		return Reason{Kind: v.GetString()}
	}
	r := Reason{Kind: v.GetString("kind")}
	switch r.Kind {
	case "aborted":
		r.Cause = v.GetString("reason", "kind")
		r.HookReason = v.GetString("reason", "reason")
	case "error":
		r.Failure = decodeFailure(v.Get("error"))
	}
	return r
}
