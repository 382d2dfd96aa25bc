"""What a node's state is, below every view: the `NodeState` base, predict-then-run questions and
verdicts, and the metric-card type (`Card`) that a node's registry entry lists."""
