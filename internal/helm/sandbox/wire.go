package sandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// wireChart is a chart as it crosses to the child: everything templates
// can read, dependencies included, without the raw archive.
type wireChart struct {
	Metadata     *chart.Metadata `json:"metadata,omitempty"`
	Lock         *chart.Lock     `json:"lock,omitempty"`
	Templates    []*common.File  `json:"templates,omitempty"`
	Files        []*common.File  `json:"files,omitempty"`
	Values       *wireValue      `json:"values,omitempty"`
	Schema       []byte          `json:"schema,omitempty"`
	Dependencies []*wireChart    `json:"dependencies,omitempty"`
}

// toWire returns ch as it crosses to the child.
func toWire(ch *chart.Chart) (*wireChart, error) {
	values, err := encodeValue(map[string]any(ch.Values))
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", ch.Name(), err)
	}
	w := &wireChart{Metadata: ch.Metadata, Lock: ch.Lock, Templates: ch.Templates, Files: ch.Files, Values: values, Schema: ch.Schema}
	for _, dep := range ch.Dependencies() {
		d, err := toWire(dep)
		if err != nil {
			return nil, err
		}
		w.Dependencies = append(w.Dependencies, d)
	}
	return w, nil
}

// chart returns the chart w describes.
func (w *wireChart) chart() (*chart.Chart, error) {
	values, err := w.Values.decode()
	if err != nil {
		return nil, err
	}
	ch := &chart.Chart{Metadata: w.Metadata, Lock: w.Lock, Templates: w.Templates, Files: w.Files, Schema: w.Schema}
	if m, ok := values.(map[string]any); ok {
		ch.Values = m
	}
	for _, wd := range w.Dependencies {
		dep, err := wd.chart()
		if err != nil {
			return nil, err
		}
		ch.AddDependency(dep)
	}
	return ch, nil
}

// wireValue is a value of a values tree with its Go type kept: templates
// print an int64 and a float64 differently, and JSON alone would turn
// both into float64.
type wireValue struct {
	Kind   string                `json:"k"`
	String string                `json:"s,omitempty"`
	Int    int64                 `json:"i,omitempty"`
	Uint   uint64                `json:"u,omitempty"`
	Float  string                `json:"f,omitempty"`
	Bool   bool                  `json:"b,omitempty"`
	List   []*wireValue          `json:"l,omitempty"`
	Map    map[string]*wireValue `json:"m,omitempty"`
	// JSON holds a value of any other type, as JSON.
	JSON json.RawMessage `json:"j,omitempty"`
}

// Kinds of wireValue.
const (
	kindNil     = "nil"
	kindString  = "string"
	kindInt     = "int"
	kindInt64   = "int64"
	kindUint64  = "uint64"
	kindFloat64 = "float64"
	kindBool    = "bool"
	kindList    = "list"
	kindMap     = "map"
	kindJSON    = "json"
)

// encodeValue returns v as it crosses to the child.
func encodeValue(v any) (*wireValue, error) {
	switch x := v.(type) {
	case nil:
		return &wireValue{Kind: kindNil}, nil
	case string:
		return &wireValue{Kind: kindString, String: x}, nil
	case bool:
		return &wireValue{Kind: kindBool, Bool: x}, nil
	case int:
		return &wireValue{Kind: kindInt, Int: int64(x)}, nil
	case int64:
		return &wireValue{Kind: kindInt64, Int: x}, nil
	case uint64:
		return &wireValue{Kind: kindUint64, Uint: x}, nil
	case float64:
		return &wireValue{Kind: kindFloat64, Float: formatFloat(x)}, nil
	case []any:
		out := &wireValue{Kind: kindList, List: make([]*wireValue, len(x))}
		for i, e := range x {
			w, err := encodeValue(e)
			if err != nil {
				return nil, err
			}
			out.List[i] = w
		}
		return out, nil
	case map[string]any:
		out := &wireValue{Kind: kindMap, Map: make(map[string]*wireValue, len(x))}
		for k, e := range x {
			w, err := encodeValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out.Map[k] = w
		}
		return out, nil
	case common.Values:
		return encodeValue(map[string]any(x))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("a value of type %s: %w", reflect.TypeOf(v), err)
	}
	return &wireValue{Kind: kindJSON, JSON: raw}, nil
}

// decode returns the value w describes.
func (w *wireValue) decode() (any, error) {
	if w == nil {
		return nil, nil
	}
	switch w.Kind {
	case kindNil:
		return nil, nil
	case kindString:
		return w.String, nil
	case kindBool:
		return w.Bool, nil
	case kindInt:
		return int(w.Int), nil
	case kindInt64:
		return w.Int, nil
	case kindUint64:
		return w.Uint, nil
	case kindFloat64:
		return parseFloat(w.Float)
	case kindList:
		out := make([]any, len(w.List))
		for i, e := range w.List {
			v, err := e.decode()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case kindMap:
		out := make(map[string]any, len(w.Map))
		for k, e := range w.Map {
			v, err := e.decode()
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case kindJSON:
		var v any
		err := json.Unmarshal(w.JSON, &v)
		return v, err
	}
	return nil, fmt.Errorf("unknown value kind %q", w.Kind)
}

// formatFloat writes f so that parseFloat reads it back exactly, NaN and
// infinities included.
func formatFloat(f float64) string {
	return fmt.Sprintf("%x", math.Float64bits(f))
}

// parseFloat reads what formatFloat wrote.
func parseFloat(s string) (float64, error) {
	var bits uint64
	if _, err := fmt.Sscanf(s, "%x", &bits); err != nil {
		return 0, fmt.Errorf("reading a float: %w", err)
	}
	return math.Float64frombits(bits), nil
}
