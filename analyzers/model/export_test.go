package model

// SetSlow makes d parse every frame (no fast path): the reference the
// fast path is compared with.
func SetSlow(d *Decoder) { d.slow = true }
