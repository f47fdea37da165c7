//! The coded-symbol wire format (in progress).
