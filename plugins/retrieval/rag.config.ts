import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import type { MetadataFilter, RetrievalMode } from './retrieval-index.js';

/** A document given inline in the config. */
export class InlineDocument {
  /** Unique among the documents; passages are named `<id>#<n>`. */
  @IsString()
  @IsNotEmpty()
  id!: string;

  @IsString()
  @IsNotEmpty()
  text!: string;

  /** What the model is told the passage comes from (a title, a URL). Default: the id. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  source?: string;
}

/** Options of {@link RagPlugin}. At least one of `documentsDir` and `documents` is required, unless `search` is `index`. */
export class RagConfig {
  /** A folder whose text files (see `extensions`, searched recursively) are indexed. */
  @ValidateIf((o: RagConfig) => o.search !== 'index' && (o.documents === undefined || o.documentsDir !== undefined))
  @IsString({ message: 'documentsDir must be a folder path (or give documents)' })
  @IsNotEmpty()
  documentsDir?: string;

  /** Documents given inline. */
  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => InlineDocument)
  documents?: InlineDocument[];

  /** Where the full-text index (or, for vector search, the passage embeddings) is persisted as JSON; rebuilt when the documents change. Default: not persisted. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  indexPath?: string;

  /** How many passages to inject before each model call. Default 3. */
  @IsInt()
  @Min(1)
  @Max(50)
  topK = 3;

  /** Passage size in characters; documents are split at paragraph breaks up to it. Default 1000. */
  @IsInt()
  @Min(50)
  @Max(100_000)
  passageChars = 1000;

  /**
   * `fulltext` (minisearch, BM25) or `vector` (cosine similarity over the bound `EMBEDDING_PROVIDER`)
   * over the local documents; or `index`: the bound `RETRIEVAL_INDEX` (e.g. `PgVectorIndex`),
   * searched for the session's tenant (`app.tenant`). Default `fulltext`.
   */
  @IsIn(['fulltext', 'vector', 'index'])
  search: 'fulltext' | 'vector' | 'index' = 'fulltext';

  /** With `search: 'index'`: how the index ranks. Default `hybrid` (vectors and full text, fused). */
  @IsIn(['hybrid', 'vector', 'fulltext'])
  indexMode: RetrievalMode = 'hybrid';

  /** With `search: 'index'`: a metadata filter every search applies, e.g. `{ lang: ['en', 'de'] }`. */
  @IsOptional()
  @IsObject()
  filter?: MetadataFilter;

  /** File name endings indexed from `documentsDir`. Default `.md`, `.txt`. */
  @IsArray()
  @ArrayNotEmpty()
  @Matches(/^\.[A-Za-z0-9]+$/, { each: true, message: 'each of extensions must look like .md' })
  extensions: string[] = ['.md', '.txt'];

  /** Passages scoring below this are not injected (BM25 score, cosine similarity for vector search; for an index, its mode's score). Default 0. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  minScore = 0;
}
