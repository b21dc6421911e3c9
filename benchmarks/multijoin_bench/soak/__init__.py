"""`--soak N`: whether state, checkpoint, heap and batch time stay flat over a long stream."""
