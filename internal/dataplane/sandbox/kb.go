package sandbox

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// article is one knowledge-base document core-api searches.
type article struct {
	ID, Title, Body string
	snippet         string
	words           bitset // the vocabulary ids of its tokens
	vec             [vecDims]float32
}

// vecDims is the size of the stand-in embedding: hashed character trigrams.
// The sandbox does not call a model; the point is that the hybrid ranking
// needs openai and the full-text one does not.
const vecDims = 64

// maxVocabulary bounds the corpus vocabulary (the bitset's size).
const maxVocabulary = 1024

type bitset [maxVocabulary / 64]uint64

func (b *bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b *bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// knowledgeBase is the indexed corpus core-api searches.
type knowledgeBase struct {
	corpus []article
	// vocabulary maps each corpus token to its id; idf is indexed by id.
	vocabulary map[string]int
	idf        []float64
}

// kb indexes the corpus on the first search, not at start-up: only a
// running sandbox searches it.
var kb = sync.OnceValue(func() *knowledgeBase { return buildCorpus(articles()) })

// articles are the corpus's documents, before indexing.
func articles() []article {
	return []article{
		{ID: "kb-101", Title: "How to raise a card dispute", Body: "A customer can dispute a card transaction within 120 days. Raise the dispute with the transaction id and the reason; the dispute is recorded and the chargeback process starts."},
		{ID: "kb-102", Title: "Chargeback reason codes", Body: "Chargeback reason codes explain why a dispute was raised: fraud, goods not received, duplicate processing, credit not processed."},
		{ID: "kb-103", Title: "Flagging a transaction for manual review", Body: "Flag a suspicious transaction for review when amounts, merchants or locations look unusual. A reviewer looks at flagged transactions within one business day."},
		{ID: "kb-104", Title: "Sanctions screening of customers and counterparties", Body: "Every new customer and payee is screened against sanctions and PEP lists. A potential match holds the payment until compliance clears it."},
		{ID: "kb-105", Title: "When screening is deferred", Body: "If the screening service is unavailable the request is recorded and screened later; the payment waits and the agent should retry after the suggested delay."},
		{ID: "kb-106", Title: "Refund timelines", Body: "Card refunds reach the customer in 3 to 5 business days; bank transfers the next business day. A refund is not a dispute."},
		{ID: "kb-107", Title: "Recognizing card fraud", Body: "Signs of card fraud: small test transactions, many declines, purchases in two countries within an hour, new devices. Block the card and raise a fraud dispute."},
		{ID: "kb-108", Title: "Know your customer (KYC) documents", Body: "KYC needs a government photo ID and a proof of address less than three months old. Businesses also provide registration and beneficial owners."},
		{ID: "kb-109", Title: "Disputed transaction status", Body: "A dispute moves from raised to under review to resolved. The customer is notified at each step; provisional credit may apply."},
		{ID: "kb-110", Title: "Duplicate charges", Body: "A duplicate charge appears twice with the same amount and merchant. It often reverses by itself within 3 days; otherwise raise a dispute with reason duplicate processing."},
		{ID: "kb-111", Title: "Account limits and velocity rules", Body: "Daily limits and velocity rules stop unusual spending. Transactions over the limit are declined or flagged for review."},
		{ID: "kb-112", Title: "Service health and degraded answers", Body: "When the embedding service is down, knowledge search falls back to full-text ranking and marks its results degraded."},
	}
}

func buildCorpus(as []article) *knowledgeBase {
	vocabulary := map[string]int{}
	df := map[int]int{}
	for i := range as {
		a := &as[i]
		for _, t := range tokenize(a.Title + " " + a.Body) {
			id, ok := vocabulary[t]
			if !ok {
				id = len(vocabulary)
				vocabulary[t] = id
			}
			if !a.words.has(id) {
				a.words.set(id)
				df[id]++
			}
		}
		a.vec = embed(a.Title + " " + a.Body)
		a.snippet = a.Body
		if len(a.snippet) > 120 {
			a.snippet = a.snippet[:strings.LastIndexByte(a.snippet[:120], ' ')] + "…"
		}
	}
	if len(vocabulary) > maxVocabulary {
		panic("knowledge base vocabulary over maxVocabulary")
	}
	idf := make([]float64, len(vocabulary))
	for id, n := range df {
		idf[id] = math.Log(1 + float64(len(as))/float64(n))
	}
	return &knowledgeBase{corpus: as, vocabulary: vocabulary, idf: idf}
}

func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// embed is the stand-in embedding: normalised hashed character trigrams of
// the ASCII-lowercased text.
func embed(s string) [vecDims]float32 {
	var v [vecDims]float32
	lower := func(c byte) byte {
		if c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i := 0; i+3 <= len(s); i++ {
		h := uint32(2166136261) // FNV-1a
		for j := i; j < i+3; j++ {
			h = (h ^ uint32(lower(s[j]))) * 16777619
		}
		v[h%vecDims]++
	}
	var n float32
	for _, x := range v {
		n += x * x
	}
	if n > 0 {
		n = float32(math.Sqrt(float64(n)))
		for i := range v {
			v[i] /= n
		}
	}
	return v
}

// SearchHit is one ranked article.
type SearchHit struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

// rank scores the corpus for query: idf-weighted token overlap, blended with
// the embedding's cosine when vector is set (hybrid ranking).
func rank(query string, topK int, vector bool) []SearchHit {
	k := kb()
	corpus, vocabulary, idf := k.corpus, k.vocabulary, k.idf
	var (
		ids  [32]int
		qids = ids[:0]
		max  float64
	)
	for _, t := range tokenize(query) {
		id, ok := vocabulary[t]
		if !ok {
			max += math.Log(1 + float64(len(corpus))) // unseen: as rare as can be
			continue
		}
		max += idf[id]
		if len(qids) < cap(ids) {
			qids = append(qids, id)
		}
	}
	var qv [vecDims]float32
	if vector {
		qv = embed(query)
	}
	type scored struct {
		i int
		s float64
	}
	var buf [16]scored
	ss := buf[:0]
	for i := range corpus {
		a := &corpus[i]
		var text float64
		for _, id := range qids {
			if a.words.has(id) {
				text += idf[id]
			}
		}
		if max > 0 {
			text /= max
		}
		s := text
		if vector {
			var cos float32
			for d := range qv {
				cos += qv[d] * a.vec[d]
			}
			s = 0.5*text + 0.5*float64(cos)
		}
		if s > 0 {
			ss = append(ss, scored{i, s})
		}
	}
	slices.SortStableFunc(ss, func(x, y scored) int { return cmp.Compare(y.s, x.s) })
	if len(ss) > topK {
		ss = ss[:topK]
	}
	hits := make([]SearchHit, len(ss))
	for i, x := range ss {
		a := &corpus[x.i]
		hits[i] = SearchHit{ID: a.ID, Title: a.Title, Score: math.Round(x.s*1000) / 1000, Snippet: a.snippet}
	}
	return hits
}
