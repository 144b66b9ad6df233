import dev.langchain4j.model.embedding.EmbeddingModel;
import dev.langchain4j.model.embedding.onnx.allminilml6v2q.AllMiniLmL6V2QuantizedEmbeddingModel;
import dev.langchain4j.model.embedding.onnx.bgesmallenv15.BgeSmallEnV15EmbeddingModel;
import dev.langchain4j.model.embedding.onnx.bgesmallenv15q.BgeSmallEnV15QuantizedEmbeddingModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;

/** Embeds base64-encoded lines with langchain4j's model of a memex catalogue name. */
public class Langchain4jReference {
  static EmbeddingModel model(String name) {
    switch (name) {
      case "bge-small-en-v1.5":
        return new BgeSmallEnV15EmbeddingModel();
      case "bge-small-en-v1.5-q":
        return new BgeSmallEnV15QuantizedEmbeddingModel();
      case "all-MiniLM-L6-v2-q":
        return new AllMiniLmL6V2QuantizedEmbeddingModel();
      default:
        throw new IllegalArgumentException("no langchain4j model for " + name);
    }
  }

  public static void main(String[] args) throws Exception {
    EmbeddingModel model = model(args[0]);
    List<String> lines = Files.readAllLines(Path.of(args[1]));
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
      float[] vector = model.embed(text).content().vector();
      for (int i = 0; i < vector.length; i++) {
        out.append(i == 0 ? "" : ",").append(vector[i]);
      }
      out.append('\n');
    }
    Files.writeString(Path.of(args[2]), out.toString());
  }
}
