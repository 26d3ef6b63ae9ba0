// Package record is shared by the Go corpus runners, as scripts/corpus/_record.py is by the Python ones
// and record.mjs by the Node ones: the scripted conversation, the tools' bodies (which record what they
// really ran with), the scripted model (an OpenAI Chat Completions endpoint on loopback) and the trace
// files. Spans are sent by the OpenTelemetry Go OTLP/HTTP exporter to a receiver on loopback, which
// writes what it received as one export request: traces.pb (protobuf) and traces.jsonl (OTLP/JSON).
package record

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	UserRequest = "What is the weather in Paris and in Tokyo, and how many people live in Atlantis?"
	FinalAnswer = "Paris: 18 C, sunny. Tokyo: 22 C, cloudy. I could not find the population of Atlantis."
	Model       = "scripted-model-1"
)

// Call is one tool call of the model's one tool-calling turn: parallel calls, each with the model's own id.
type Call struct {
	ID        string
	Name      string
	Arguments map[string]any
}

var Calls = []Call{
	{"call_weather_paris", "get_weather", map[string]any{"city": "Paris"}},
	{"call_weather_tokyo", "get_weather", map[string]any{"city": "Tokyo"}},
	{"call_population_atlantis", "get_population", map[string]any{"city": "Atlantis"}},
}

// Usage of each model turn, as the scripted model reports it.
var Usage = []map[string]int{
	{"input_tokens": 120, "output_tokens": 45},
	{"input_tokens": 260, "output_tokens": 30},
}

// Weather is get_weather's answer.
type Weather struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
	Sky   string `json:"sky"`
}

var weather = map[string]Weather{
	"Paris": {"Paris", 18, "sunny"},
	"Tokyo": {"Tokyo", 22, "cloudy"},
}

var (
	mu  sync.Mutex
	ran []map[string]any
	// Closed when both weather calls have run: the failing tool fails after them, so the run, which
	// ends at the first failing tool, holds every call.
	weatherDone = make(chan struct{})
)

func note(entry map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	ran = append(ran, entry)
	weathers := 0
	for _, r := range ran {
		if r["name"] == "get_weather" {
			weathers++
		}
	}
	if entry["name"] == "get_weather" && weathers == 2 {
		close(weatherDone)
	}
}

// GetWeather is the tool body every framework wraps: it records what it really ran with.
func GetWeather(city string) Weather {
	result := weather[city]
	note(map[string]any{
		"name": "get_weather", "arguments": map[string]any{"city": city},
		"result": map[string]any{"city": result.City, "temp_c": result.TempC, "sky": result.Sky}, "error": nil,
	})
	return result
}

// GetPopulation always fails for Atlantis: the failing tool of every run (after the weather calls).
func GetPopulation(city string) (int, error) {
	select {
	case <-weatherDone:
	case <-time.After(30 * time.Second): // a framework that runs the calls one by one: fail anyway
	}
	err := fmt.Errorf("unknown city: %s", city)
	note(map[string]any{
		"name": "get_population", "arguments": map[string]any{"city": city}, "result": nil,
		"error": map[string]any{"type": fmt.Sprintf("%T", err), "message": err.Error()},
	})
	return 0, err
}

// --- the scripted model: OpenAI Chat Completions on loopback (scripts/corpus/_chat_http.py's answers) ---

func completion(turn int) map[string]any {
	usage := Usage[turn]
	message := map[string]any{"role": "assistant", "content": nil}
	finish := "stop"
	if turn == 0 {
		finish = "tool_calls"
		var calls []map[string]any
		for _, c := range Calls {
			arguments, _ := json.Marshal(c.Arguments)
			calls = append(calls, map[string]any{
				"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(arguments)},
			})
		}
		message["tool_calls"] = calls
	} else {
		message["content"] = FinalAnswer
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-scripted-%d", turn),
		"object":  "chat.completion",
		"created": 1_700_000_000 + turn,
		"model":   Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens":     usage["input_tokens"],
			"completion_tokens": usage["output_tokens"],
			"total_tokens":      usage["input_tokens"] + usage["output_tokens"],
		},
	}
}

// ScriptedModel answers each POST to /chat/completions with the next turn of the script. URL: its base
// URL (what an OpenAI client takes as its base, ending in /v1).
type ScriptedModel struct {
	URL    string
	server *http.Server
	mu     sync.Mutex
	turn   int
}

func StartScriptedModel() (*ScriptedModel, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &ScriptedModel{URL: fmt.Sprintf("http://%s/v1", listener.Addr())}
	m.server = &http.Server{Handler: http.HandlerFunc(m.answer)}
	go func() { _ = m.server.Serve(listener) }()
	return m, nil
}

func (m *ScriptedModel) answer(w http.ResponseWriter, r *http.Request) {
	var asked map[string]any
	if err := json.NewDecoder(r.Body).Decode(&asked); err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error": {"message": "not scripted"}}`, http.StatusNotFound)
		return
	}
	if asked["stream"] == true {
		http.Error(w, `{"error": {"message": "streaming is not scripted"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	turn := min(m.turn, len(Usage)-1)
	m.turn++
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion(turn))
}

// Turns is how many model calls the script answered.
func (m *ScriptedModel) Turns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turn
}

func (m *ScriptedModel) Close() { _ = m.server.Close() }

// --- the loopback OTLP/HTTP receiver -------------------------------------------------------------------

// Receiver takes the OTLP/HTTP protobuf export requests an exporter sends it (Endpoint: its traces URL).
type Receiver struct {
	Endpoint string
	server   *http.Server
	mu       sync.Mutex
	bodies   [][]byte
}

func StartReceiver() (*Receiver, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{Endpoint: fmt.Sprintf("http://%s/v1/traces", listener.Addr())}
	r.server = &http.Server{Handler: http.HandlerFunc(r.receive)}
	go func() { _ = r.server.Serve(listener) }()
	return r, nil
}

func (r *Receiver) receive(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	answer, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(answer)
}

// request is every export request received, merged into one, with this machine's paths scrubbed.
func (r *Receiver) request() (*coltrace.ExportTraceServiceRequest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	merged := &coltrace.ExportTraceServiceRequest{}
	for _, body := range r.bodies {
		part := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, part); err != nil {
			return nil, err
		}
		merged.ResourceSpans = append(merged.ResourceSpans, part.ResourceSpans...)
	}
	scrubRequest(merged)
	return merged, nil
}

func (r *Receiver) Close() { _ = r.server.Close() }

// --- this machine's paths (in error texts, stack traces) replaced by placeholders ------------------------

func prefixes() [][2]string {
	_, here, _, _ := runtime.Caller(0)
	repo := filepath.Clean(filepath.Join(filepath.Dir(here), "..", "..", "..", ".."))
	pairs := [][2]string{{repo, "<repo>"}, {runtime.GOROOT(), "<goroot>"}}
	if cache := os.Getenv("GOMODCACHE"); cache != "" {
		pairs = append(pairs, [2]string{cache, "<gomodcache>"})
	} else if home, err := os.UserHomeDir(); err == nil {
		pairs = append(pairs, [2]string{filepath.Join(home, "go", "pkg", "mod"), "<gomodcache>"})
	}
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	return pairs
}

func scrubText(text string, pairs [][2]string) string {
	for _, p := range pairs {
		if p[0] != "" {
			text = strings.ReplaceAll(text, p[0], p[1])
		}
	}
	return text
}

func scrubValue(v *common.AnyValue, pairs [][2]string) {
	switch value := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		value.StringValue = scrubText(value.StringValue, pairs)
	case *common.AnyValue_ArrayValue:
		for _, item := range value.ArrayValue.GetValues() {
			scrubValue(item, pairs)
		}
	case *common.AnyValue_KvlistValue:
		scrubAttributes(value.KvlistValue.GetValues(), pairs)
	}
}

func scrubAttributes(attributes []*common.KeyValue, pairs [][2]string) {
	for _, kv := range attributes {
		if kv.Value != nil {
			scrubValue(kv.Value, pairs)
		}
	}
}

func scrubRequest(request *coltrace.ExportTraceServiceRequest) {
	pairs := prefixes()
	for _, rs := range request.ResourceSpans {
		scrubAttributes(rs.GetResource().GetAttributes(), pairs)
		for _, ss := range rs.ScopeSpans {
			for _, span := range ss.Spans {
				scrubAttributes(span.Attributes, pairs)
				if span.Status != nil {
					span.Status.Message = scrubText(span.Status.Message, pairs)
				}
				for _, event := range span.Events {
					scrubAttributes(event.Attributes, pairs)
				}
			}
		}
	}
}

// --- the files ------------------------------------------------------------------------------------------

// hexIDs turns protobuf JSON's base64 trace and span ids into OTLP/JSON's hex.
func hexIDs(node any) error {
	switch value := node.(type) {
	case map[string]any:
		for key, item := range value {
			text, isText := item.(string)
			if (key == "traceId" || key == "spanId" || key == "parentSpanId") && isText && text != "" {
				raw, err := base64.StdEncoding.DecodeString(text)
				if err != nil {
					return err
				}
				value[key] = hex.EncodeToString(raw)
			} else if err := hexIDs(item); err != nil {
				return err
			}
		}
	case []any:
		for _, item := range value {
			if err := hexIDs(item); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonLine(request *coltrace.ExportTraceServiceRequest) ([]byte, error) {
	body, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(request)
	if err != nil {
		return nil, err
	}
	var tree any
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.UseNumber()
	if err := decoder.Decode(&tree); err != nil {
		return nil, err
	}
	if err := hexIDs(tree); err != nil {
		return nil, err
	}
	return marshal(tree, "")
}

func marshal(value any, indent string) ([]byte, error) {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", indent)
	if err := encoder.Encode(value); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func callID(name string, arguments any) (string, error) {
	for _, c := range Calls {
		if c.Name == name && fmt.Sprint(c.Arguments) == fmt.Sprint(arguments) {
			return c.ID, nil
		}
	}
	return "", fmt.Errorf("the script never asked for %s(%v)", name, arguments)
}

// Versions gives each named module's version as this binary was built with it.
func Versions(modules ...string) map[string]string {
	out := map[string]string{"go": strings.TrimPrefix(runtime.Version(), "go")}
	info, _ := debug.ReadBuildInfo()
	for _, dep := range info.Deps {
		for _, name := range modules {
			if dep.Path == name {
				out[name] = strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return out
}

// Write writes the trace files and the ground truth into outDir. endedBy: the error that ended the run
// before the model's final answer (then one model call, no answer).
func Write(outDir string, receiver *Receiver, framework string, versions map[string]string, endedBy *string) error {
	request, err := receiver.request()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	pb, err := proto.MarshalOptions{Deterministic: true}.Marshal(request)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "traces.pb"), pb, 0o644); err != nil {
		return err
	}
	line, err := jsonLine(request)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "traces.jsonl"), line, 0o644); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	calls := make([]map[string]any, 0, len(ran))
	for _, r := range ran {
		id, err := callID(r["name"].(string), r["arguments"])
		if err != nil {
			return err
		}
		call := map[string]any{"call_id": id}
		for k, v := range r {
			call[k] = v
		}
		calls = append(calls, call)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i]["call_id"].(string) < calls[j]["call_id"].(string) })
	truth := map[string]any{
		"framework": framework, "versions": versions, "user_request": UserRequest, "model": Model,
		"final_answer": FinalAnswer, "ended_by": nil, "usage": Usage, "tool_calls": calls,
	}
	if endedBy != nil {
		truth["final_answer"], truth["ended_by"], truth["usage"] = nil, *endedBy, Usage[:1]
	}
	body, err := marshal(truth, "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "ground_truth.json"), body, 0o644); err != nil {
		return err
	}
	spans := 0
	for _, rs := range request.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			spans += len(ss.Spans)
		}
	}
	fmt.Printf("%s: %d spans, %d tool calls -> %s\n", framework, spans, len(calls), outDir)
	return nil
}
