"""Placeholder: being written."""
import sys
sys.exit(77)
