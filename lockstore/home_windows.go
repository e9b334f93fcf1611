package lockstore

import "strings"

// sameHome compares two Hermes homes as Hermes' _same_hermes_home does on
// Windows, where os.path.normcase folds case.
func sameHome(a, b string) bool { return strings.EqualFold(canonical(a), canonical(b)) }
