package search

// The ranking's parameters, chosen by measurement against the labelled
// queries (testdata/queries.json; docs/BENCHMARKS.md has each step).

// fieldWeight is how much a term counts in each field.
var fieldWeight = [numFields]float64{
	fieldName:       3,
	fieldTitle:      1,
	fieldDesc:       1,
	fieldParams:     1,
	fieldParamDescs: 0.5,
	fieldServer:     0.5,
}

// fieldB is how much each field's length normalises its counts (BM25's b).
var fieldB = [numFields]float64{
	fieldName:       0.75,
	fieldTitle:      0.5,
	fieldDesc:       0.75,
	fieldParams:     0.5,
	fieldParamDescs: 0.75,
	fieldServer:     0,
}

// expandQueries says whether a query's words also search for their
// synonyms (expand.go).
var expandQueries = true

// splitCase says whether words split at camelCase and letter-digit
// boundaries too, not only at other characters; stemming whether terms
// are stemmed. Both are on; the switches are there to measure them.
var (
	splitCase = true
	stemming  = true
)
