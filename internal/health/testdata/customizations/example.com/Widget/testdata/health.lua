-- Deeper than <group>/<Kind>: never loaded.
this is not lua
