package schema

// IsNative reports whether Compile chose the native validator.
func IsNative(v *Validator) bool { return v.native != nil }

// CompileReference compiles a schema for the validation library alone, the
// reference the native validator is compared with.
func CompileReference(schemaJSON []byte) (*Validator, error) {
	_, sch, err := compileReference(schemaJSON)
	if err != nil {
		return nil, err
	}
	return &Validator{schema: sch}, nil
}
