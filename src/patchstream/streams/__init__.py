"""Kafka topics, codecs and the Faust parse stage."""
