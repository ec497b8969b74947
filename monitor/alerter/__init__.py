"""The alerter (``monitor alerter``): consumes events and delivers them to channels."""
