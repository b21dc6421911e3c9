package io.github.sparkmultijoin.execution

/**
 * What the operator's output iterators need beyond Scala's: Spark's own operators commit their
 * state through CompletionIterator, which is Spark-private.
 */
object Iterators {

  /** `rows`, calling `onDone` once, when they are exhausted. */
  def onExhaustion[A](rows: Iterator[A])(onDone: => Unit): Iterator[A] = new Iterator[A] {
    private var done = false
    override def hasNext: Boolean = rows.hasNext || {
      if (!done) { done = true; onDone }
      false
    }
    override def next(): A = rows.next()
  }
}
