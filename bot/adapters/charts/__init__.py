"""Drawing the cost chart (bot/domain/cost_chart.py) as a PNG."""
