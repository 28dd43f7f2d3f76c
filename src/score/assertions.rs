//! Assertions scorer (in progress).
