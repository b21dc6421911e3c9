"""`--cdc`: changelog joins of tables that change, against the foreachBatch recipe and Flink."""
