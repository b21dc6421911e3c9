"""`--latency`: how long a joined row takes to come out, in real-time mode and in micro-batches."""
