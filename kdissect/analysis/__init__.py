"""Figures computed from the tables and events: latency, errors, rolling live figures."""
