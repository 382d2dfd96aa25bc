"""Server and process tuning, no lesson knowledge: the process's build queue, memory housekeeping,
its counts for the class server (Prometheus), how fast one client may ask (throttle) and Bokeh's
property defaults computed once."""
