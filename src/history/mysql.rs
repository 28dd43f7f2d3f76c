//! The MySQL / MariaDB history store (in progress).
