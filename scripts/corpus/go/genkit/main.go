// Genkit for Go, its built-in tracing exported by the OpenTelemetry Go SDK's OTLP/HTTP exporter (the
// tracer provider Genkit uses is the global one: registered before genkit.Init); the model is Genkit's
// OpenAI-compatible plugin pointed at a scripted Chat Completions endpoint on loopback (no network).
// Usage: go run ./genkit OUT_DIR (from scripts/corpus/go/)
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/compat_oai"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"toolspan.dev/corpus/record"
)

type cityInput struct {
	City string `json:"city"`
}

func run(out string) error {
	ctx := context.Background()
	model, err := record.StartScriptedModel()
	if err != nil {
		return err
	}
	defer model.Close()
	receiver, err := record.StartReceiver()
	if err != nil {
		return err
	}
	defer receiver.Close()

	// The user's lines: an OTLP exporter on a tracer provider, set as the global one before Genkit starts.
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(receiver.Endpoint))
	if err != nil {
		return err
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("weather-agent"))),
	)
	otel.SetTracerProvider(provider)

	g := genkit.Init(ctx, genkit.WithPlugins(&compat_oai.OpenAICompatible{
		Provider: "scripted",
		APIKey:   "scripted",
		BaseURL:  model.URL,
	}))
	getWeather := genkit.DefineTool(g, "get_weather", "Current weather of a city.",
		func(_ *ai.ToolContext, in cityInput) (record.Weather, error) { return record.GetWeather(in.City), nil })
	getPopulation := genkit.DefineTool(g, "get_population", "Population of a city.",
		func(_ *ai.ToolContext, in cityInput) (int, error) { return record.GetPopulation(in.City) })

	response, genErr := genkit.Generate(ctx, g,
		ai.WithModelName("scripted/"+record.Model),
		ai.WithSystem("Answer with the tools."),
		ai.WithPrompt(record.UserRequest),
		ai.WithTools(getWeather, getPopulation),
	)
	if err := provider.Shutdown(ctx); err != nil {
		return err
	}
	// Genkit ends the generation at a tool's error: one model call, no answer.
	if genErr == nil {
		return fmt.Errorf("the failing tool did not end the run: %q", response.Text())
	}
	if model.Turns() != 1 {
		return fmt.Errorf("expected one model call, the script answered %d", model.Turns())
	}
	endedBy := genErr.Error()
	versions := record.Versions("github.com/firebase/genkit/go", "go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "github.com/openai/openai-go")
	return record.Write(out, receiver, "genkit_go", versions, &endedBy)
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: genkit OUT_DIR")
	}
	if err := run(os.Args[1]); err != nil {
		log.Fatal(err)
	}
}
