//! Model-repository discovery and cross-model facts (to be filled in).
