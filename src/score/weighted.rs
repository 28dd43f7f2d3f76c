//! Weighted score (in progress).
