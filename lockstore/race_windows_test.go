package lockstore

// linkReplacement: none here. A symlink needs a privilege on Windows, and
// Wine's rename of one fails.
var linkReplacement *raceReplacement
