"""The CDC example's parts (examples/cdc_delta_pipeline.py runs them): the source tables and the
producer of their changes, and the query over their change data feeds with its batch twin."""
