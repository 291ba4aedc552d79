//! Unit tests of the auto-complete pipeline on small models built in memory.
