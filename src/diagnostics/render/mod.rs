//! Renderers, one per output format.
