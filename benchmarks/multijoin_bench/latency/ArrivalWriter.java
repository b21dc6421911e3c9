package multijoinbench;

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;

import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * The latency benchmark's sink (run.py): notes each row's columns and the wall-clock time it
 * reached the sink, one file per partition and batch. A JVM writer, because Spark hands rows to
 * a Python foreach writer in batches, which would measure the batching (and, in real-time mode,
 * hold a long batch's rows to its end; the real-time kill test reads them as they come too).
 */
public class ArrivalWriter extends ForeachWriter<Row> {

  private final String folder;
  private transient Writer out;

  public ArrivalWriter(String folder) {
    this.folder = folder;
  }

  @Override
  public boolean open(long partitionId, long epochId) {
    try {
      out = new BufferedWriter(new FileWriter(
          folder + "/" + partitionId + "-" + epochId + "-" + System.nanoTime() + ".csv"));
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void process(Row row) {
    try {
      out.write(row.mkString(",") + "," + System.currentTimeMillis() + "\n");
      out.flush(); // the run polls the files to know when every row has come out
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close(Throwable error) {
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
