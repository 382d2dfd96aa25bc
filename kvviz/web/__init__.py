"""Page components with no lesson knowledge: text-only and batched updates, Bokeh sources, lazy
sections, navigation, keyboard, accessible names, the connection notice, widgets, stylesheet
URLs and JavaScript files. Process and server tuning is in kvviz/process/."""
