"""The discrete-event simulator: drives the engine and writes real-format RocketMQ logs plus ground truth."""
