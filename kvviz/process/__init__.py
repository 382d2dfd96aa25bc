"""Server and process tuning, no lesson knowledge: the process's build queue, memory housekeeping,
its counts for the class server (Prometheus) and Bokeh's property defaults computed once."""
