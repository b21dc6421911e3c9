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
 * Given a column and a least value, it notes only that column of the rows whose column holds at
 * least that value: the CDC sweep's markers (cdc/sweep.py), among many more rows than a file
 * could keep up with.
 */
public class ArrivalWriter extends ForeachWriter<Row> {

  private final String folder;
  private final String column;
  private final long atLeast;
  private transient Writer out;

  public ArrivalWriter(String folder) {
    this(folder, null, 0L);
  }

  public ArrivalWriter(String folder, String column, long atLeast) {
    this.folder = folder;
    this.column = column;
    this.atLeast = atLeast;
  }

  private boolean noted(Row row) {
    if (column == null) {
      return true;
    }
    int index = row.fieldIndex(column);
    return !row.isNullAt(index) && ((Number) row.get(index)).longValue() >= atLeast;
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
    if (!noted(row)) {
      return;
    }
    try {
      String noted =
          column == null ? row.mkString(",") : String.valueOf(row.get(row.fieldIndex(column)));
      out.write(noted + "," + System.currentTimeMillis() + "\n");
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
