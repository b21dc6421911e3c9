package multijoinbench;

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.types.Row;

/**
 * The CDC sweep's sink on Flink (flink/cdc_sweep.py), the peer of Spark's ArrivalWriter: notes
 * the wall-clock time each marker row (its field `field` at least `atLeast`) reaches it, one file
 * per subtask. A JVM sink, as on Spark, so that both engines stamp a row the moment the join
 * hands it on, with the same clock; the other rows pass through it unwritten.
 */
public class MarkerSink implements Sink<Row> {

  private final String folder;
  private final int field;
  private final long atLeast;

  public MarkerSink(String folder, int field, long atLeast) {
    this.folder = folder;
    this.field = field;
    this.atLeast = atLeast;
  }

  @Override
  public SinkWriter<Row> createWriter(WriterInitContext context) throws IOException {
    String name = context.getTaskInfo().getIndexOfThisSubtask() + "-" + System.nanoTime();
    return new MarkerWriter(new BufferedWriter(new FileWriter(folder + "/" + name + ".csv")));
  }

  private final class MarkerWriter implements SinkWriter<Row> {
    private final Writer out;

    MarkerWriter(Writer out) {
      this.out = out;
    }

    @Override
    public void write(Row row, Context context) throws IOException {
      Object value = row.getField(field);
      if (value != null && ((Number) value).longValue() >= atLeast) {
        out.write(value + "," + row.getKind().shortString() + "," + System.currentTimeMillis()
            + "\n");
        out.flush(); // the sweep polls the files for its markers
      }
    }

    @Override
    public void flush(boolean endOfInput) throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      out.close();
    }
  }
}
