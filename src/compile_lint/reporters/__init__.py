"""Reporters only format findings; they never decide what is a finding."""
