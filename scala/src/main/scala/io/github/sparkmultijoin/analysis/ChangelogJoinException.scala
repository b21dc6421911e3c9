package io.github.sparkmultijoin.analysis

import org.apache.spark.sql.AnalysisException

/** Why a query with changelog inputs cannot run, and what to do about it. */
class ChangelogJoinException(message: String)
  extends AnalysisException(message, None, None, None, None, Map.empty, Array.empty)
