"""Built-in generators. Each module registers its generators with `@generator` on import;
add a module here and import it below."""
