//! Model providers behind one streaming trait (OpenAI-compatible chat completions first).
