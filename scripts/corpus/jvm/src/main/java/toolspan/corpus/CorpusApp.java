package toolspan.corpus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.ai.tool.execution.ToolExecutionException;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The corpus's Spring AI agent: a ChatClient with two {@code @Tool} methods, asked the script's question
 * once against the scripted model (an OpenAI Chat Completions endpoint on loopback, given by
 * {@code SCRIPTED_MODEL_URL}). Its spans are Spring AI's own Micrometer Observations, bridged to
 * OpenTelemetry and exported over OTLP to {@code OTLP_ENDPOINT}. The tools record what they really ran with
 * (the ground truth) as JSON lines in {@code TOOLSPAN_CORPUS_RAN}; the answer (or the error that ended the
 * run) is printed on stdout.
 */
@SpringBootApplication
public class CorpusApp {

    static final String USER_REQUEST =
            "What is the weather in Paris and in Tokyo, and how many people live in Atlantis?";

    static final Map<String, Map<String, Object>> WEATHER = Map.of(
            "Paris", Map.of("temp_c", 18, "sky", "sunny"),
            "Tokyo", Map.of("temp_c", 22, "sky", "cloudy"));

    /** The tools: each records what it ran with before it answers (or raises). */
    public static class WeatherTools {

        private final ObjectMapper json = new ObjectMapper();

        private final Path ran = Path.of(System.getenv("TOOLSPAN_CORPUS_RAN"));

        private synchronized void record(String name, String city, Object result, Map<String, String> error) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("name", name);
            line.put("arguments", Map.of("city", city));
            line.put("result", result);
            line.put("error", error);
            try {
                Files.writeString(ran, json.writeValueAsString(line) + "\n", StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            }
            catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Tool(name = "get_weather", description = "Current weather of a city.")
        public Map<String, Object> getWeather(@ToolParam(description = "The city.") String city) {
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("city", city);
            result.put("temp_c", WEATHER.get(city).get("temp_c"));
            result.put("sky", WEATHER.get(city).get("sky"));
            record("get_weather", city, result, null);
            return result;
        }

        @Tool(name = "get_population", description = "Population of a city.")
        public long getPopulation(@ToolParam(description = "The city.") String city) {
            String message = "unknown city: " + city;
            IllegalArgumentException error = new IllegalArgumentException(message);
            record("get_population", city, null,
                    Map.of("type", error.getClass().getSimpleName(), "message", message));
            throw error;
        }
    }

    public static void main(String[] args) {
        ConfigurableApplicationContext context = SpringApplication.run(CorpusApp.class, args);
        try {
            ChatClient client = context.getBean(ChatClient.Builder.class).build();
            String answer = client.prompt()
                    .system("Answer with the tools.")
                    .user(USER_REQUEST)
                    .tools(new WeatherTools())
                    .call()
                    .content();
            System.out.println("ANSWER: " + answer);
        }
        catch (ToolExecutionException e) {
            // spring.ai.tools.throw-exception-on-error: the failing tool's exception ends the run.
            System.out.println("ENDED_BY: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        // Closing the context shuts the tracer provider down, which exports every span still batched.
        System.exit(SpringApplication.exit(context, () -> 0));
    }
}
