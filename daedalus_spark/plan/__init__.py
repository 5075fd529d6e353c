"""Plan: Algorithm 1, pure: analyzed inputs in, a Decision with its reason out."""
