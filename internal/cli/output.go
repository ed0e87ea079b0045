package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// printStructured prints v as indented JSON (format "json") or as YAML,
// the output of every -o json|yaml.
func printStructured(w io.Writer, format string, v any) error {
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	_, err = w.Write(data)
	return err
}
