"""Recipes: a setup that worked, recorded from a turn, replayed without the model, validated and exported."""
