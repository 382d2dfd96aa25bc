"""Controls and forms of a node: the transport and its Play timer, the predict-then-run form, the
back and continue links. Each is handed what it drives (a node state, the node list)."""
