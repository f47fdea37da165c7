//! LT codes (in progress).
