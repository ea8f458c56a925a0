import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** Body of `POST /sessions/:id/messages`. */
export class SendMessageDto {
  /** The user's message. */
  @IsString()
  @IsNotEmpty()
  @MaxLength(100_000)
  message!: string;
}
