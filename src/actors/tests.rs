//! Tests of the actor tree.
