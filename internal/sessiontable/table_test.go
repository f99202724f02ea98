package sessiontable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids[V any](t *Table[V]) []string {
	var out []string
	t.Ascending(func(id string, _ V) bool { out = append(out, id); return true })
	return out
}

// TestTableOrder: Get and Touch make a session the newest, Peek does not;
// Oldest is the least recently used; Remove forgets.
func TestTableOrder(t *testing.T) {
	tb := New[int](3)
	ea := tb.Add("a", 1)
	tb.Add("b", 2)
	tb.Add("c", 3)
	assert.True(t, tb.Full())
	assert.Equal(t, []string{"a", "b", "c"}, ids(tb))

	v, ok := tb.Peek("a")
	require.True(t, ok)
	assert.Equal(t, 1, v)
	assert.Equal(t, []string{"a", "b", "c"}, ids(tb), "Peek leaves the order")

	v, ok = tb.Get("b")
	require.True(t, ok)
	assert.Equal(t, 2, v)
	assert.Equal(t, []string{"a", "c", "b"}, ids(tb))

	tb.Touch(ea)
	assert.Equal(t, []string{"c", "b", "a"}, ids(tb))
	id, v, ok := tb.Oldest()
	require.True(t, ok)
	assert.Equal(t, "c", id)
	assert.Equal(t, 3, v)

	assert.True(t, tb.Remove("c"))
	assert.False(t, tb.Remove("c"))
	assert.False(t, tb.Full())
	assert.Equal(t, 2, tb.Len())
	_, ok = tb.Get("c")
	assert.False(t, ok)

	tb.Add("b", 20) // replaces and renews
	assert.Equal(t, []string{"a", "b"}, ids(tb))
	v, _ = tb.Peek("b")
	assert.Equal(t, 20, v)

	var stop []string
	tb.Ascending(func(id string, _ int) bool { stop = append(stop, id); return false })
	assert.Equal(t, []string{"a"}, stop, "Ascending stops when told")
}

func TestTableSmallBoundAndEmpty(t *testing.T) {
	tb := New[string](0)
	assert.Equal(t, 1, tb.Max(), "a bound below one holds one session")
	_, _, ok := tb.Oldest()
	assert.False(t, ok)
	tb.Ascending(func(string, string) bool { t.Fatal("empty table iterated"); return true })
}

// TestListRemoveTwice: removing an element twice, or one of another list,
// leaves the list as it was.
func TestListRemoveTwice(t *testing.T) {
	var a, b List[int]
	e1 := a.PushBack(1)
	e2 := a.PushBack(2)
	f := b.PushBack(9)
	a.Remove(e1)
	a.Remove(e1)
	a.Remove(f)
	a.MoveToBack(f)
	assert.Equal(t, 1, a.Len())
	assert.Equal(t, 1, b.Len())
	assert.Same(t, e2, a.Front())
	assert.Nil(t, e2.Next())
	a.Remove(e2)
	assert.Nil(t, a.Front())
	assert.Equal(t, 0, a.Len())
	a.Remove(nil)
}

// TestListPushBackElem: an element its owner keeps joins, leaves and joins
// again; pushing one already in a list leaves it where it is.
func TestListPushBackElem(t *testing.T) {
	var l List[int]
	var own Elem[int]
	own.Value = 7
	l.PushBack(1)
	l.PushBackElem(&own)
	l.PushBack(2)
	assert.Equal(t, 3, l.Len())
	l.PushBackElem(&own)
	assert.Equal(t, 3, l.Len(), "already in the list")
	assert.Same(t, &own, l.Front().Next())
	l.Remove(&own)
	assert.Equal(t, 2, l.Len())
	l.PushBackElem(&own)
	assert.Equal(t, 3, l.Len())
	assert.Nil(t, own.Next(), "joined again at the back")
	var vs []int
	for e := l.Front(); e != nil; e = e.Next() {
		vs = append(vs, e.Value)
	}
	assert.Equal(t, []int{1, 2, 7}, vs)
}
